"""``pip_exec`` and ``cpan_install`` written as recipe steps: read with tsuku's keys and
planned as tsuku plans a primitive it does not decompose, field by field against its
golden plans (the style of ``test_tsuku_plans_ecosystems.py``: our own recipes, the
expected plans transcribed by hand, compared as JSON text, format 5's header).

``pip_exec``'s golden is black's (``b/black/v26.1a1-linux-amd64.json``): there tsuku
wrote the step by decomposing ``pipx_install``; a recipe that writes the same step
itself plans to the same primitive, its lock and notes given instead of resolved, so
nothing is named ``computed_at_download``. ``cpan_install``'s is carton's
(``c/carton/v1.0.35-linux-amd64.json``, perl nested).
"""

from __future__ import annotations

import pytest
from test_tsuku_plans import PERL_FILE, PERL_SHA, PERL_URL, _github_archive_golden
from test_tsuku_plans_ecosystems import (
    LINUX,
    _header,
    _linux,
    _nested,
    _python_standalone,
    _same,
    black_golden,
)

from tsukud.recipe import (
    CpanInstallStep,
    PipExecStep,
    RecipeError,
    RecipeParseError,
    ResolvedVersion,
    parse_recipe,
    require_supported,
    unsupported_actions,
)
from tsukud.recipe.plan import plan_recipe
from tsukud.recipe.toml_io import dump_recipe

# black 26.1a1's lock as tsuku resolved it (the golden's locked_requirements).
BLACK_LOCK = "".join(
    f"{pin} \\\n    --hash=sha256:{sha}\n"
    for pin, sha in (
        ("black==26.1a1", "8fb482cf11667cd271a900cef5e58648c4511f3e25902cf1d35b4294c6964c99"),
        ("click==8.3.1", "981153a64e25f12d547d3426c367a4857371575ee7ad18df2a6183ab0545b2a6"),
        (
            "mypy-extensions==1.1.0",
            "1be4cccdb0f2482337c4743e60421de3a356cd97508abadd57d47403e94f5505",
        ),
        ("packaging==25.0", "29572ef2b1f17581046b3a2227d5c611fb25ec70ca1ba8554b24b0e69331a484"),
        ("pathspec==0.12.1", "a0d503e138a4c123b27490a4f7beda6a01c6f288df0e4a8b79c7eb0dc7b4cc08"),
        (
            "platformdirs==4.5.1",
            "d03afa3963c806a9bed9d5125c8f4cb2fdaf74a55ab60e5d59b3fde758104d31",
        ),
        ("pytokens==0.3.0", "95b2b5eaf832e469d141a378872480ede3f251a5a5041b8ec6e581d3ac71bbf3"),
        ("tomli==2.3.0", "e95b1af3c5b07d9e643909b5abbec77cd9f1217e6d0bca72b0234736b9fb1f1b"),
        (
            "typing-extensions==4.15.0",
            "f0fa19c6845758ab08074a0cfa8b7aecb71c999ca73d62883bc25cc018c4e548",
        ),
    )
)

BLACK = f"""
[metadata]
name = "black"
description = "The uncompromising Python code formatter"
dependencies = ["python-standalone"]

[[steps]]
action = "pip_exec"
package = "black"
version = "26.1a1"
executables = ["black", "blackd"]
python_version = "3.10.19"
has_native_addons = true
locked_requirements = '''
{BLACK_LOCK}'''

[verify]
command = "black --version"
pattern = "black, {{version}}"
"""

BLACK_GOLDEN = black_golden(BLACK_LOCK)


def test_a_written_pip_exec_plans_as_the_step_tsuku_decomposes_black_into() -> None:
    plan = _linux(BLACK, "26.1a1", dependencies=[_python_standalone()])
    assert plan.steps[0].computed_at_download == ()
    own = _same(plan, BLACK_GOLDEN)
    assert own["unsupported"] == []


def test_pip_exec_reads_tsukus_keys_and_writes_them_back() -> None:
    recipe = parse_recipe(BLACK)
    (step,) = recipe.steps
    assert isinstance(step, PipExecStep)
    assert (step.package, step.version, step.executables) == (
        "black",
        "26.1a1",
        ("black", "blackd"),
    )
    assert step.locked_requirements == BLACK_LOCK
    assert (step.python_version, step.has_native_addons) == ("3.10.19", True)
    assert parse_recipe(dump_recipe(recipe)) == recipe
    # Installable on Linux: the one step of its platform.
    assert require_supported(recipe, LINUX) == [(0, step)]
    assert unsupported_actions(recipe) == []


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("package", '"git+https://x/y"', "a PyPI project name"),
        ("executables", '["../sh"]', "a command name"),
        ("has_native_addons", '"yes"', "true or false"),
    ],
)
def test_pip_exec_refuses_what_would_reach_pip_as_something_else(
    key: str, value: str, expected: str
) -> None:
    text = BLACK.replace(f"\n{key} = ", f"\n{key}_was = ", 1).replace(
        "[[steps]]\n", f"[[steps]]\n{key} = {value}\n", 1
    )
    with pytest.raises(RecipeParseError) as err:
        parse_recipe(text)
    assert f"steps[0].{key}" in err.value.message and expected in err.value.message


def test_pip_exec_without_its_version_or_executables_is_not_installable() -> None:
    for text in (
        BLACK.replace('version = "26.1a1"\n', ""),
        BLACK.replace('executables = ["black", "blackd"]\n', ""),
    ):
        with pytest.raises(Exception) as err:
            require_supported(parse_recipe(text), LINUX)
        assert "needs executables" in str(err.value)


PERL = """
[metadata]
name = "perl"
description = "Perl with cpanm"

[[steps]]
action = "github_archive"
repo = "skaji/relocatable-perl"
asset_pattern = "perl-{os}-{arch}.tar.xz"
strip_dirs = 1
binaries = ["bin/perl", "bin/cpanm"]
install_mode = "directory"

[verify]
command = "{install_dir}/bin/perl -v"
pattern = "{version}"
"""

CARTON = """
[metadata]
name = "carton"
description = "Perl module dependency manager"
dependencies = ["perl"]

[version]
source = "metacpan"
distribution = "Carton"

[[steps]]
action = "cpan_install"
distribution = "Carton"
executables = ["carton"]

[verify]
command = "carton version"
pattern = "carton {version}"
"""

# golden: c/carton/v1.0.35-linux-amd64.json (format 3; perl 5.42.0.0 nested)
CARTON_GOLDEN = {
    **_header("carton", "1.0.35", deterministic=False),
    "dependencies": [
        _nested(
            _github_archive_golden(
                tool="perl",
                version="5.42.0.0",
                file=PERL_FILE,
                sha=PERL_SHA,
                url=PERL_URL,
                size=14832372,
                binaries=["bin/perl", "bin/cpanm"],
                verify={"command": "{install_dir}/bin/perl -v", "pattern": "{version}"},
            )
        )
    ],
    "steps": [
        {
            "action": "cpan_install",
            "params": {"distribution": "Carton", "executables": ["carton"]},
            "evaluable": False,
            "deterministic": False,
        }
    ],
    "verify": {"command": "carton version", "pattern": "carton {version}"},
}


def test_cpan_install_plans_as_tsuku_plans_carton() -> None:
    perl = plan_recipe(
        parse_recipe(PERL),
        ResolvedVersion("5.42.0.0", "5.42.0.0"),
        LINUX,
        install_dir="/t",
        assets=(PERL_FILE,),
        digests={PERL_FILE: PERL_SHA},
        sizes={PERL_FILE: 14832372},
    )
    plan = _linux(CARTON, "1.0.35", dependencies=[perl])
    own = _same(plan, CARTON_GOLDEN)
    # A plan lists what cannot be planned; installing it is refused (below).
    assert own["unsupported"] == []


def test_cpan_install_reads_tsukus_keys_and_is_supported_without_executables_refused() -> None:
    text = CARTON.replace(
        'executables = ["carton"]\n',
        'module = "App::Carton"\nexecutables = ["carton"]\nmirror = "http://127.0.0.1:1/"\n'
        "mirror_only = true\n",
    )
    recipe = parse_recipe(text)
    step = recipe.steps[0]
    assert isinstance(step, CpanInstallStep)
    assert (step.distribution, step.module, step.mirror_only) == ("Carton", "App::Carton", True)
    assert parse_recipe(dump_recipe(recipe)) == recipe
    # The step installs (in the build container: install/cpan.py), its version from the
    # CPAN mirror's index (metacpan); that source goes with a cpan_install step only.
    assert unsupported_actions(recipe) == []
    elsewhere = parse_recipe(
        PERL.replace("[[steps]]", '[version]\nsource = "metacpan"\n\n[[steps]]')
    )
    with pytest.raises(RecipeError) as needs:
        require_supported(elsewhere, LINUX)
    assert "version source metacpan needs a cpan_install step" in needs.value.message
    unsourced = parse_recipe(text.replace('source = "metacpan"\n', ""))
    assert [s for _, s in require_supported(unsourced, LINUX)] == [step]
    bare = parse_recipe(
        text.replace('source = "metacpan"\n', "").replace('executables = ["carton"]\n', "")
    )
    with pytest.raises(RecipeError) as err:
        require_supported(bare, LINUX)
    assert "cpan_install needs executables" in err.value.message
    # What would change what is installed, or with which perl, is refused, not ignored.
    for key, value in (("cpanfile", '"cpanfile"'), ("perl_version", '"5.38.0"')):
        keyed = parse_recipe(text.replace("mirror_only = true\n", f"{key} = {value}\n"))
        assert unsupported_actions(keyed) == [f"cpan_install parameter {key}"]
        with pytest.raises(RecipeError) as refused:
            require_supported(keyed, LINUX)
        assert f"cpan_install's {key} is not supported yet" in refused.value.message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("distribution", '"App::Ack"'),  # a module name where a distribution goes
        ("distribution", '"-e system"'),
        ("module", '"App::Ack; rm -rf"'),
        ("module", '"App::"'),
    ],
)
def test_cpan_names_that_would_reach_cpanm_as_something_else_are_refused(
    key: str, value: str
) -> None:
    text = CARTON.replace('distribution = "Carton"\nexecutables', f"{key} = {value}\nexecutables")
    if key == "module":
        text = text.replace(f"{key} = {value}\n", f'distribution = "Carton"\n{key} = {value}\n')
    with pytest.raises(RecipeParseError) as err:
        parse_recipe(text)
    assert f"steps[0].{key}" in err.value.message


@pytest.mark.parametrize("text", [BLACK, CARTON], ids=["pip_exec", "cpan_install"])
def test_a_generated_recipe_may_not_write_either(text: str) -> None:
    """What a generated recipe installs is what its validation proved; neither step is
    validated, so create's static checks refuse both (a person's recipe may have them)."""
    from tsukud.create.static_checks import check_on_paper

    (step,) = parse_recipe(text).steps
    messages = [f.message for f in check_on_paper(parse_recipe(text))]
    assert f"steps[0]: action {step.action} is not allowed in generated recipes" in " ".join(
        messages
    ), messages
