# tsuku: command-not-found hook for zsh.
#
# Written to $TSUKU_HOME/share/hooks/ by `tsukuctl hook install`, which also adds one
# line marked "# tsuku hook (managed)" to ${ZDOTDIR:-$HOME}/.zshrc that sources this
# file; `tsukuctl hook uninstall` removes that line. Local edits here are overwritten.
#
# An unknown command is looked up in $TSUKU_HOME/share/binary-index.tsv (kept current by
# tsukud) with one grep: no Python and no daemon on this path. Modes, from
# TSUKU_AUTO_INSTALL or else the file $TSUKU_HOME/share/hooks/mode:
#   suggest  (default) print which tool provides the command and how to install it
#   confirm  ask, then run `tsukuctl install <tool>` and re-run the command
#   auto     install without asking (saying so), then re-run the command
# A command several tools claim, none of them named after it, is never installed by the
# hook: every mode lists the claimants and leaves the choice to the person.
# An existing command_not_found_handler is kept and still called; the exit status stays
# 127 unless a command was installed and re-run.

# Interactive shells only (scripts get the plain 127), and only once per shell.
[[ -o interactive ]] || return 0
(( ${+__tsuku_hook_loaded} )) && return 0
typeset -g __tsuku_hook_loaded=1

# TSUKU_HOME is where this file lives (%x: the file being sourced).
typeset -g __tsuku_home=${${(%):-%x}%/share/hooks/tsuku.zsh}
[[ $__tsuku_home == */tsuku.zsh || -z $__tsuku_home ]] && __tsuku_home=${TSUKU_HOME:-$HOME/.tsuku}

# sysparams[procsubstpid] (zsh 5.6+) lets a lookup past its deadline kill its grep.
zmodload zsh/system 2>/dev/null

if (( ${+functions[command_not_found_handler]} )); then
    functions[__tsuku_orig_cnf]=$functions[command_not_found_handler]
fi

# What zsh would have done without this hook.
__tsuku_fallback() {
    emulate -L zsh
    if (( ${+functions[__tsuku_orig_cnf]} )); then
        __tsuku_orig_cnf "$@"
        return $?
    fi
    print -ru2 -- "zsh: command not found: $1"
    return 127
}

# Sets __tsuku_tool, __tsuku_src and __tsuku_others from the first index line for $1;
# the read gives up
# after 100 ms, so a hung file system cannot hang the shell.
__tsuku_lookup() {
    emulate -L zsh
    local idx=$__tsuku_home/share/binary-index.tsv line= fd pid
    [[ -f $idx && -r $idx ]] || return 1
    # Names are [A-Za-z0-9._+-] (checked by the caller): in a basic regex only '.' needs
    # escaping. The tab ends the binary field, so "kubectl" never matches "kubectl-krew".
    # `read ... < <(grep)` would wait for grep when the redirection closes, deadline or
    # not: open the pipe on its own fd instead, and kill grep if it has not answered.
    exec {fd}< <(LC_ALL=C exec grep -m1 -e "^${1//./\\.}"$'\t' -- "$idx" 2>/dev/null)
    pid=${sysparams[procsubstpid]:-}
    IFS= read -r -t ${TSUKU_HOOK_DEADLINE:-0.1} -u $fd line
    [[ -z $line && -n $pid ]] && kill $pid 2>/dev/null
    exec {fd}<&-
    [[ -n $line ]] || return 1
    line=${line#*$'\t'}
    __tsuku_tool=${line%%$'\t'*}
    __tsuku_src=${line#*$'\t'}
    # A fourth field: several tools claim the command and none is named after it.
    __tsuku_others=
    if [[ $__tsuku_src == *$'\t'* ]]; then
        __tsuku_others=${__tsuku_src#*$'\t'}
        __tsuku_src=${__tsuku_src%%$'\t'*}
    fi
    [[ -n $__tsuku_tool ]]
}

__tsuku_mode() {
    emulate -L zsh
    __tsuku_m=${TSUKU_AUTO_INSTALL:-}
    if [[ -z $__tsuku_m && -f $__tsuku_home/share/hooks/mode ]]; then
        IFS= read -r __tsuku_m <$__tsuku_home/share/hooks/mode
    fi
    case $__tsuku_m in
        (confirm|ask) __tsuku_m=confirm ;;
        (auto|1|true|yes|on) __tsuku_m=auto ;;
        (*) __tsuku_m=suggest ;;
    esac
}

# Installs $__tsuku_tool and runs "$@" again; Ctrl-C stops either step.
__tsuku_install_and_run() {
    local bin=$__tsuku_home/bin rc
    if ! (( ${+commands[tsukuctl]} )); then
        print -ru2 -- "tsuku: tsukuctl is not on PATH; cannot install $__tsuku_tool"
        __tsuku_fallback "$@"
        return $?
    fi
    # TSUKU_HOOK_ACTIVE: a command missing inside the install must not ask again.
    # The handler runs in a subshell that Ctrl-C would kill before tsukuctl could say
    # what the run spent: a trap (not an ignore, which tsukuctl would inherit) keeps it.
    setopt localoptions localtraps
    trap : INT
    TSUKU_HOOK_ACTIVE=1 command tsukuctl install "$__tsuku_tool"
    rc=$?
    trap - INT
    if (( rc == 130 )); then  # Ctrl-C: tsukuctl said what the run spent
        print -ru2 -- "tsuku: installing $__tsuku_tool cancelled"
        return 130
    elif (( rc != 0 )); then
        print -ru2 -- "tsuku: installing $__tsuku_tool failed"
        return 127
    fi
    rehash
    if (( ${+commands[$1]} )); then
        "$@"
    elif [[ -x $bin/$1 ]]; then
        print -ru2 -- "tsuku: $bin is not on PATH; running $bin/$1 (add it: PATH=\"$bin:\$PATH\")"
        "$bin/$1" "${@[2,-1]}"
    else
        print -ru2 -- "tsuku: installed $__tsuku_tool, but it did not provide $1"
        return 127
    fi
}

command_not_found_handler() {
    emulate -L zsh
    local __tsuku_tool __tsuku_src __tsuku_others __tsuku_m answer st
    # No lookup in a non-interactive context, inside our own install, for tsuku itself,
    # or for names no tool has (paths, globs: they would need escaping).
    if [[ ! -o interactive || -n ${TSUKU_HOOK_ACTIVE:-} || $1 == (tsukuctl|tsukud) ]] ||
        [[ $1 == *[^A-Za-z0-9._+-]* || $1 != [A-Za-z0-9_]* ]] ||
        ! __tsuku_lookup "$1"; then
        __tsuku_fallback "$@"
        return $?
    fi
    if [[ $__tsuku_src == installed ]]; then
        __tsuku_fallback "$@"
        st=$?
        print -ru2 -- "$1 is installed by tsuku ($__tsuku_tool) in $__tsuku_home/bin, which is not on PATH. Add it: PATH=\"$__tsuku_home/bin:\$PATH\""
        return $st
    fi
    if [[ -n $__tsuku_others ]]; then
        # Several claimants, none named after the command: name them all, install none
        # (whatever the mode): the person picks.
        __tsuku_fallback "$@"
        st=$?
        if (( st == 127 )); then
            print -ru2 -- "$1 is claimed by several tools, none named $1: $__tsuku_tool, ${__tsuku_others//,/, }. Install the one you mean with: tsukuctl install <tool>"
        fi
        return $st
    fi
    __tsuku_mode
    if [[ $__tsuku_m == confirm ]] && { : >/dev/tty } 2>/dev/null; then
        print -rn -- "$1 is provided by $__tsuku_tool."$'\n'"Install $__tsuku_tool now? [y/N] " >/dev/tty
        IFS= read -r answer </dev/tty || answer=
        case $answer in
            ([yY]|[yY][eE][sS]) __tsuku_install_and_run "$@"; return $? ;;
        esac
        __tsuku_fallback "$@"
        return $?
    fi
    if [[ $__tsuku_m == auto ]]; then
        print -ru2 -- "tsuku: $1 is provided by $__tsuku_tool; installing it (auto-install mode)"
        __tsuku_install_and_run "$@"
        return $?
    fi
    __tsuku_fallback "$@"
    st=$?
    # A wrapped handler that dealt with the command itself (status != 127) had the last word.
    if (( st == 127 )); then
        print -ru2 -- "$1 is provided by $__tsuku_tool. Install it with: tsukuctl install $__tsuku_tool"
    fi
    return $st
}

# Shell start-up the person approved for installed tools (a recipe's
# install_shell_init: tsukud writes each fragment to share/shell.d, mode 0600, only after
# they read it and said yes; it goes with the tool).
for __tsuku_init in "$__tsuku_home"/share/shell.d/*.zsh(N); do
    [[ -f $__tsuku_init ]] && . "$__tsuku_init"
done
unset __tsuku_init
