# shellcheck shell=bash
# tsuku: command-not-found hook for bash.
#
# Written to $TSUKU_HOME/share/hooks/ by `tsukuctl hook install`, which also adds one
# line marked "# tsuku hook (managed)" to ~/.bashrc that sources this file; `tsukuctl
# hook uninstall` removes that line. Local edits here are overwritten on reinstall.
#
# An unknown command is looked up in $TSUKU_HOME/share/binary-index.tsv (kept current by
# tsukud) with one grep: no Python and no daemon on this path, so it costs about as much
# as bash's own "command not found". Modes, from TSUKU_AUTO_INSTALL or else the file
# $TSUKU_HOME/share/hooks/mode:
#   suggest  (default) print which tool provides the command and how to install it
#   confirm  ask, then run `tsukuctl install <tool>` and re-run the command
#   auto     install without asking (saying so), then re-run the command
# A command several tools claim, none of them named after it, is never installed by the
# hook: every mode lists the claimants and leaves the choice to the person.
# An existing command_not_found_handle is kept and still called; the exit status stays
# 127 unless a command was installed and re-run.

# Interactive shells only (scripts get the plain 127), and only once per shell.
case $- in *i*) ;; *) return 0 ;; esac
[ -n "${__tsuku_hook_loaded:-}" ] && return 0
__tsuku_hook_loaded=1

# TSUKU_HOME is where this file lives: the rc line names it, so a TSUKU_HOME exported
# later (or not at all) in the rc file does not matter.
case ${BASH_SOURCE[0]} in
    */share/hooks/tsuku.bash) __tsuku_home=${BASH_SOURCE[0]%/share/hooks/tsuku.bash} ;;
    *) __tsuku_home=${TSUKU_HOME:-$HOME/.tsuku} ;;
esac

# read -t takes fractions of a second from bash 4 on; macOS's bash 3.2 gets 1 s.
# TSUKU_HOOK_DEADLINE (seconds) lengthens it on a slow or loaded machine.
__tsuku_deadline=${TSUKU_HOOK_DEADLINE:-0.1}
((BASH_VERSINFO[0] >= 4)) || __tsuku_deadline=1

if declare -F command_not_found_handle >/dev/null 2>&1; then
    __tsuku_def=$(declare -f command_not_found_handle)
    eval "__tsuku_orig_cnf ${__tsuku_def#command_not_found_handle}"
    unset __tsuku_def
fi

# What bash would have done without this hook.
__tsuku_fallback() {
    if declare -F __tsuku_orig_cnf >/dev/null; then
        __tsuku_orig_cnf "$@"
        return $?
    fi
    printf '%s: %s: command not found\n' "${0##*/}" "$1" >&2
    return 127
}

# Sets __tsuku_tool, __tsuku_src and __tsuku_others from the first index line for $1. The read gives up
# after 100 ms (a hung file system, a FIFO in the index's place): the shell never hangs.
__tsuku_lookup() {
    local idx=$__tsuku_home/share/binary-index.tsv line='' last=${!:-}
    [[ -f $idx && -r $idx ]] || return 1
    # Names are [A-Za-z0-9._+-] (checked by the caller): in a basic regex only '.' needs
    # escaping. The tab ends the binary field, so "kubectl" never matches "kubectl-krew".
    IFS= read -r -t "$__tsuku_deadline" line < <(LC_ALL=C exec grep -m1 -e "^${1//./\\.}	" -- "$idx" 2>/dev/null)
    if (($? > 128)); then
        # Timed out: do not leave the grep behind. $! names it from bash 4.4 on; before,
        # it is still the user's last background job, which must not be touched.
        [[ ${!:-} != "$last" ]] && kill "$!" 2>/dev/null
        return 1
    fi
    [[ -n $line ]] || return 1
    line=${line#*	}
    __tsuku_tool=${line%%	*}
    __tsuku_src=${line#*	}
    # A fourth field: several tools claim the command and none is named after it.
    __tsuku_others=
    if [[ $__tsuku_src == *'	'* ]]; then
        __tsuku_others=${__tsuku_src#*	}
        __tsuku_src=${__tsuku_src%%	*}
    fi
    [[ -n $__tsuku_tool ]]
}

__tsuku_mode() {
    __tsuku_m=${TSUKU_AUTO_INSTALL:-}
    if [[ -z $__tsuku_m && -f $__tsuku_home/share/hooks/mode ]]; then
        IFS= read -r __tsuku_m <"$__tsuku_home/share/hooks/mode"
    fi
    case $__tsuku_m in
        confirm | ask) __tsuku_m=confirm ;;
        auto | 1 | true | yes | on) __tsuku_m=auto ;;
        *) __tsuku_m=suggest ;;
    esac
}

# Installs $__tsuku_tool and runs "$@" again. Ctrl-C stops either step (both are
# foreground children of this handler's subshell).
__tsuku_install_and_run() {
    local bin=$__tsuku_home/bin rc
    if ! command -v tsukuctl >/dev/null 2>&1; then
        printf 'tsuku: tsukuctl is not on PATH; cannot install %s\n' "$__tsuku_tool" >&2
        __tsuku_fallback "$@"
        return $?
    fi
    # TSUKU_HOOK_ACTIVE: a command missing inside the install must not ask again.
    TSUKU_HOOK_ACTIVE=1 command tsukuctl install "$__tsuku_tool"
    rc=$?
    if ((rc == 130)); then # Ctrl-C: tsukuctl said what the run spent
        printf 'tsuku: installing %s cancelled\n' "$__tsuku_tool" >&2
        return 130
    elif ((rc != 0)); then
        printf 'tsuku: installing %s failed\n' "$__tsuku_tool" >&2
        return 127
    fi
    hash -r
    if command -v -- "$1" >/dev/null 2>&1; then
        "$@"
    elif [[ -x $bin/$1 ]]; then
        # shellcheck disable=SC2016 # a literal $PATH, for the user to paste
        printf 'tsuku: %s is not on PATH; running %s (add it: PATH="%s:$PATH")\n' \
            "$bin" "$bin/$1" "$bin" >&2
        "$bin/$1" "${@:2}"
    else
        printf 'tsuku: installed %s, but it did not provide %s\n' "$__tsuku_tool" "$1" >&2
        return 127
    fi
}

command_not_found_handle() {
    local __tsuku_tool __tsuku_src __tsuku_others __tsuku_m answer status
    # No lookup in a non-interactive context, inside our own install, for tsuku itself,
    # or for names no tool has (paths, globs: they would need escaping).
    if [[ $- != *i* || -n ${TSUKU_HOOK_ACTIVE:-} || $1 == tsukuctl || $1 == tsukud ]] ||
        [[ $1 == *[!A-Za-z0-9._+-]* || $1 != [A-Za-z0-9_]* ]] ||
        ! __tsuku_lookup "$1"; then
        __tsuku_fallback "$@"
        return $?
    fi
    if [[ $__tsuku_src == installed ]]; then
        __tsuku_fallback "$@"
        status=$?
        # shellcheck disable=SC2016 # a literal $PATH, for the user to paste
        printf '%s is installed by tsuku (%s) in %s, which is not on PATH. Add it: PATH="%s:$PATH"\n' \
            "$1" "$__tsuku_tool" "$__tsuku_home/bin" "$__tsuku_home/bin" >&2
        return "$status"
    fi
    if [[ -n $__tsuku_others ]]; then
        # Several claimants, none named after the command: name them all, install none
        # (whatever the mode): the person picks.
        __tsuku_fallback "$@"
        status=$?
        if [[ $status == 127 ]]; then
            printf '%s is claimed by several tools, none named %s: %s, %s. Install the one you mean with: tsukuctl install <tool>\n' \
                "$1" "$1" "$__tsuku_tool" "${__tsuku_others//,/, }" >&2
        fi
        return "$status"
    fi
    __tsuku_mode
    if [[ $__tsuku_m == confirm ]] && { : >/dev/tty; } 2>/dev/null; then
        printf '%s is provided by %s.\nInstall %s now? [y/N] ' "$1" "$__tsuku_tool" "$__tsuku_tool" >/dev/tty
        IFS= read -r answer </dev/tty || answer=
        case $answer in
            [yY] | [yY][eE][sS]) __tsuku_install_and_run "$@"; return $? ;;
        esac
        __tsuku_fallback "$@"
        return $?
    fi
    if [[ $__tsuku_m == auto ]]; then
        printf 'tsuku: %s is provided by %s; installing it (auto-install mode)\n' "$1" "$__tsuku_tool" >&2
        __tsuku_install_and_run "$@"
        return $?
    fi
    __tsuku_fallback "$@"
    status=$?
    # A wrapped handler that dealt with the command itself (status != 127) had the last word.
    if [[ $status == 127 ]]; then
        printf '%s is provided by %s. Install it with: tsukuctl install %s\n' \
            "$1" "$__tsuku_tool" "$__tsuku_tool" >&2
    fi
    return "$status"
}

# Shell start-up the person approved for installed tools (a recipe's
# install_shell_init: tsukud writes each fragment to share/shell.d, mode 0600, only after
# they read it and said yes; it goes with the tool).
for __tsuku_init in "$__tsuku_home"/share/shell.d/*.bash; do
    # shellcheck source=/dev/null
    [ -f "$__tsuku_init" ] && . "$__tsuku_init"
done
unset __tsuku_init
