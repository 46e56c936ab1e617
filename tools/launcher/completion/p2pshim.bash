# bash completion for p2pshim (installed as
# share/bash-completion/completions/p2pshim).
#
# Commands and options are read from the launcher's own --help (the
# `p2pshim` being completed), so that they always match the installed
# version: an option written "--name VALUE" there takes a value. After
# `run`'s PROGRAM the words are the program's, completed as a command line
# of their own where bash-completion is loaded.

# _p2pshim_help EXE [COMMAND]: the launcher's (or the command's) help.
_p2pshim_help() {
    "$1" ${2:+"$2"} --help 2>/dev/null
}

# The option lines of a help text (stdin), each cut to its lead: the part
# before the explanation ("-o, --output FILE", "--format text").
_p2pshim_leads() {
    awk '/^[ \t]+-/ { sub(/^[ \t]+/, ""); n = split($0, part, /  +/); print part[1] }'
}

# The options a help text lists, one per line.
_p2pshim_options_in() {
    _p2pshim_leads | grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[ ,]*//' |
        sort -u
}

# The options of a help text that take a value: a lead with a word that
# is not an option ("--log FILE", "--format text", "--set NAME=VALUE").
_p2pshim_valued_in() {
    _p2pshim_leads | awk '{
        valued = 0
        for (i = 1; i <= NF; i++) { w = $i; sub(/,$/, "", w); if (w !~ /^-/ || w ~ /=/) valued = 1 }
        if (valued) for (i = 1; i <= NF; i++) {
            w = $i; sub(/,$/, "", w); sub(/=.*/, "", w); if (w ~ /^-/) print w }
    }' | sort -u
}

# _p2pshim_choices OPTION: the literal values a help text (stdin) gives
# OPTION, from "OPTION a|b|c" or from leads "OPTION a", "OPTION b".
_p2pshim_choices() {
    grep -oE -- "(^|[][ ,])$1[ =][a-z][a-z|-]*( |\$|\\])" |
        sed -e "s/^.*$1[ =]//" -e 's/[] ]*$//' | tr '|' '\n' | sort -u
}

_p2pshim() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local exe=${COMP_WORDS[0]} cmd="" cmd_at=0 i
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) ;;
        *) cmd=${COMP_WORDS[i]}; cmd_at=$i; break ;;
        esac
    done

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            # The top-level options: those of the usage lines "p2pshim --help | ...".
            COMPREPLY=($(compgen -W "$(_p2pshim_help "$exe" |
                grep -E '^[[:space:]]*(usage:[[:space:]]*)?p2pshim -' |
                grep -oE -- '--?[A-Za-z][A-Za-z0-9-]*' | sort -u)" -- "$cur"))
        else
            local cmds
            cmds=$(_p2pshim_help "$exe" | sed -n 's/^  \([a-z][a-z-]*\)\( .*\)\{0,1\}$/\1/p')
            COMPREPLY=($(compgen -W "${cmds:-run topo report help}" -- "$cur"))
        fi
        return
    fi

    local help valued
    help=$(_p2pshim_help "$exe" "$cmd")
    valued=" $(printf '%s\n' "$help" | _p2pshim_valued_in | tr '\n' ' ') "

    # run: where do the program's words start? After "--", or at the
    # first word that is neither an option nor an option's value.
    if [[ $cmd == run ]]; then
        local prog_at=0
        for ((i = cmd_at + 1; i < COMP_CWORD; i++)); do
            local w=${COMP_WORDS[i]}
            if [[ $w == -- ]]; then prog_at=$((i + 1)); break; fi
            if [[ $w == -* ]]; then
                [[ $w != *=* && $valued == *" $w "* ]] && i=$((i + 1))
                continue
            fi
            prog_at=$i
            break
        done
        if ((prog_at > 0)); then
            if ((prog_at == COMP_CWORD)); then
                COMPREPLY=($(compgen -c -- "$cur"))
            elif declare -F _command_offset >/dev/null; then
                _command_offset "$prog_at"
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
        fi
    fi

    if [[ $cmd == help ]]; then
        local cmds
        cmds=$(_p2pshim_help "$exe" | sed -n 's/^  \([a-z][a-z-]*\)\( .*\)\{0,1\}$/\1/p')
        COMPREPLY=($(compgen -W "${cmds:-run topo report}" -- "$cur"))
        return
    fi

    if [[ $valued == *" $prev "* ]]; then
        local values
        # From the leads and the usage lines, not from prose.
        values=$({ printf '%s\n' "$help" | _p2pshim_leads
                   printf '%s\n' "$help" | grep -E '^[[:space:]]*(usage:)?[[:space:]]*p2pshim '
                 } | _p2pshim_choices "$prev")
        # run's --mode names its values in prose.
        [[ -z $values && $cmd == run && $prev == --mode ]] && values="upgrade observe off"
        if [[ -n $values ]]; then
            COMPREPLY=($(compgen -W "$values" -- "$cur"))
        elif [[ $prev != --set ]]; then
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(printf '%s\n' "$help" | _p2pshim_options_in)" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _p2pshim p2pshim
