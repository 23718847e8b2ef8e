# tsuku: command-not-found hook for fish.
#
# Written to $TSUKU_HOME/share/hooks/ by `tsukuctl hook install`, which also writes
# ~/.config/fish/conf.d/tsuku.fish: one line marked "# tsuku hook (managed)" that
# sources this file; `tsukuctl hook uninstall` removes it. Local edits here are
# overwritten.
#
# An unknown command is looked up in $TSUKU_HOME/share/binary-index.tsv (kept current by
# tsukud) with one grep: no Python and no daemon on this path. Modes, from
# TSUKU_AUTO_INSTALL or else the file $TSUKU_HOME/share/hooks/mode:
#   suggest  (default) print which tool provides the command and how to install it
#   confirm  ask, then run `tsukuctl install <tool>` and re-run the command
#   auto     install without asking (saying so), then re-run the command
# A command several tools claim, none of them named after it, is never installed by the
# hook: every mode lists the claimants and leaves the choice to the person.
# An existing fish_command_not_found is kept and still called. fish itself sets $status
# to 127 after an unknown command, whatever the handler does.

# Interactive shells only (scripts get the plain 127), and only once per shell.
# (`exit` in a sourced file stops the sourcing, not the shell.)
status is-interactive; or exit 0
set -q __tsuku_hook_loaded; and exit 0
set -g __tsuku_hook_loaded 1

# TSUKU_HOME is where this file lives.
set -g __tsuku_home (string replace -r -- '/share/hooks/tsuku\.fish$' '' (status filename))
if test "$__tsuku_home" = (status filename); or test -z "$__tsuku_home"
    set __tsuku_home $HOME/.tsuku
    set -q TSUKU_HOME; and set __tsuku_home $TSUKU_HOME
end
# A hard deadline on the lookup needs timeout(1): fish's read has no timeout.
set -g __tsuku_timeout
# TSUKU_HOOK_DEADLINE (seconds, 0.1 unless set) lengthens it on a slow or loaded machine.
set -g __tsuku_deadline 0.1
test -n "$TSUKU_HOOK_DEADLINE"; and set __tsuku_deadline $TSUKU_HOOK_DEADLINE
command -q timeout; and set __tsuku_timeout timeout $__tsuku_deadline


# What fish would have done without this hook.
function __tsuku_fallback
    if functions -q __tsuku_orig_cnf
        __tsuku_orig_cnf $argv
    else
        printf 'fish: Unknown command: %s\n' $argv[1] >&2
    end
end

# Prints "tool<TAB>source[<TAB>other claimants]" of the first index line for $argv[1].
function __tsuku_lookup
    set -l idx $__tsuku_home/share/binary-index.tsv
    test -f $idx -a -r $idx; or return 1
    # Names are [A-Za-z0-9._+-] (checked by the caller): in a basic regex only '.' needs
    # escaping. The tab ends the binary field, so "kubectl" never matches "kubectl-krew".
    set -l pattern '^'(string replace -a -- . '\.' $argv[1])\t
    set -l line (LC_ALL=C command $__tsuku_timeout grep -m1 -e $pattern -- $idx 2>/dev/null)
    or return 1
    string replace -r -- '^[^\t]*\t' '' $line[1]
end

function __tsuku_mode
    set -l m
    if set -q TSUKU_AUTO_INSTALL; and test -n "$TSUKU_AUTO_INSTALL"
        set m $TSUKU_AUTO_INSTALL
    else if test -f $__tsuku_home/share/hooks/mode
        read -l line <$__tsuku_home/share/hooks/mode
        set m $line
    end
    switch "$m"
        case confirm ask
            echo confirm
        case auto 1 true yes on
            echo auto
        case '*'
            echo suggest
    end
end

# Installs $argv[1] (the tool) and runs $argv[2..] (the command line) again.
function __tsuku_install_and_run
    set -l tool $argv[1]
    set -l cmd $argv[2..-1]
    set -l bin $__tsuku_home/bin
    if not command -q tsukuctl
        printf 'tsuku: tsukuctl is not on PATH; cannot install %s\n' $tool >&2
        __tsuku_fallback $cmd
        return 127
    end
    # TSUKU_HOOK_ACTIVE: a command missing inside the install must not ask again.
    TSUKU_HOOK_ACTIVE=1 command tsukuctl install $tool
    set -l rc $status
    if test $rc -eq 130 # Ctrl-C: tsukuctl said what the run spent
        printf 'tsuku: installing %s cancelled\n' $tool >&2
        return 130
    else if test $rc -ne 0
        printf 'tsuku: installing %s failed\n' $tool >&2
        return 127
    end
    if command -q -- $cmd[1]
        command $cmd
    else if test -x $bin/$cmd[1]
        printf 'tsuku: %s is not on PATH; running %s (add it: fish_add_path %s)\n' $bin $bin/$cmd[1] $bin >&2
        $bin/$cmd[1] $cmd[2..-1]
    else
        printf 'tsuku: installed %s, but it did not provide %s\n' $tool $cmd[1] >&2
        return 127
    end
end

function __tsuku_cnf
    set -l name $argv[1]
    # No lookup in a non-interactive context, inside our own install, for tsuku itself,
    # or for names no tool has (paths, globs: they would need escaping).
    if not status is-interactive; or set -q TSUKU_HOOK_ACTIVE; or contains -- $name tsukuctl tsukud
        or not string match -qr -- '^[A-Za-z0-9_][A-Za-z0-9._+-]*$' $name
        __tsuku_fallback $argv
        return 127
    end
    set -l hit (__tsuku_lookup $name)
    or begin
        __tsuku_fallback $argv
        return 127
    end
    set -l fields (string split -- \t $hit[1])
    set -l tool $fields[1]
    if test "$fields[2]" = installed
        __tsuku_fallback $argv
        printf '%s is installed by tsuku (%s) in %s, which is not on PATH. Add it: fish_add_path %s\n' $name $tool $__tsuku_home/bin $__tsuku_home/bin >&2
        return 127
    end
    if test -n "$fields[3]"
        # Several claimants, none named after the command: name them all, install none
        # (whatever the mode): the person picks.
        __tsuku_fallback $argv
        printf '%s is claimed by several tools, none named %s: %s, %s. Install the one you mean with: tsukuctl install <tool>\n' $name $name $tool (string replace -a -- , ', ' $fields[3]) >&2
        return 127
    end
    set -l mode (__tsuku_mode)
    if test $mode = confirm; and begin
            echo -n >/dev/tty
        end 2>/dev/null
        printf '%s is provided by %s.\n' $name $tool >/dev/tty
        read -l -P "Install $tool now? [y/N] " answer </dev/tty
        if string match -qir -- '^y(es)?$' "$answer"
            __tsuku_install_and_run $tool $argv
            return
        end
        __tsuku_fallback $argv
        return 127
    end
    if test $mode = auto
        printf 'tsuku: %s is provided by %s; installing it (auto-install mode)\n' $name $tool >&2
        __tsuku_install_and_run $tool $argv
        return
    end
    __tsuku_fallback $argv
    printf '%s is provided by %s. Install it with: tsukuctl install %s\n' $name $tool $tool >&2
    return 127
end

# fish sources conf.d (where this file is sourced from) before config.fish, so a handler
# defined in config.fish would replace ours. Take over at the first prompt instead, when
# every start-up file has run, keeping whatever handler is there then (`functions -q`
# also loads fish's own default, so there is always one to keep).
function __tsuku_take_over --on-event fish_prompt
    functions --erase __tsuku_take_over
    if functions -q fish_command_not_found; and not functions -q __tsuku_orig_cnf
        functions --copy fish_command_not_found __tsuku_orig_cnf
    end
    functions --erase fish_command_not_found
    functions --copy __tsuku_cnf fish_command_not_found
end
