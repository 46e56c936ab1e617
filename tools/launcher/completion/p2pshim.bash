# bash completion for p2pshim (installed as
# share/bash-completion/completions/p2pshim).
#
# Commands, options and the values of options with a closed set come from
# the launcher being completed, `p2pshim --completion-table`: the tables
# its own parser uses (tools/launcher/cli.h says the format), so that they
# always match that version. After `run`'s PROGRAM the words are the
# program's, completed as a command line of their own where
# bash-completion is loaded.

# _p2pshim_table EXE: the launcher's table, one line per option:
#   COMMAND<TAB>--NAME<TAB>-C or -<TAB>VALUE or -<TAB>CHOICES
# and a first line "commands<TAB>NAME...".
_p2pshim_table() {
    "$1" --completion-table 2>/dev/null
}

# _p2pshim_column TABLE COMMAND WHAT [OPTION]: from TABLE (a string),
# COMMAND's options (WHAT=options), those that take a value (valued), or
# OPTION's choices (choices).
_p2pshim_column() {
    printf '%s\n' "$1" | awk -F'\t' -v c="$2" -v what="$3" -v o="${4:-}" '
        $1 != c { next }
        what == "options" || (what == "valued" && $4 == "VALUE") {
            print $2; if ($3 != "-") print $3; next }
        what == "choices" && ($2 == o || $3 == o) { n = split($5, w, " ")
            for (i = 1; i <= n; i++) print w[i] }'
}

_p2pshim() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local exe=${COMP_WORDS[0]} cmd="" cmd_at=0 i table cmds
    COMPREPLY=()
    table=$(_p2pshim_table "$exe")
    cmds=$(printf '%s\n' "$table" | awk -F'\t' '$1 == "commands" { print $2 }')
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) ;;
        *) cmd=${COMP_WORDS[i]}; cmd_at=$i; break ;;
        esac
    done

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$(_p2pshim_column "$table" p2pshim options)" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
        fi
        return
    fi

    if [[ $cmd == help ]]; then
        COMPREPLY=($(compgen -W "${cmds/help/}" -- "$cur"))
        return
    fi

    local valued
    valued=" $(_p2pshim_column "$table" "$cmd" valued | tr '\n' ' ') "

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

    if [[ $valued == *" $prev "* ]]; then
        local values
        values=$(_p2pshim_column "$table" "$cmd" choices "$prev")
        if [[ -n $values ]]; then
            COMPREPLY=($(compgen -W "$values" -- "$cur"))
            # NAME= (run --set) goes on with the value: no space after it.
            [[ ${COMPREPLY[0]:-} == *= ]] && compopt -o nospace 2>/dev/null
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_p2pshim_column "$table" "$cmd" options)" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _p2pshim p2pshim
