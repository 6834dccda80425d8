# bash completion for pfsck; made by `pfsck --help-bash` from its option table.
_pfsck() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    case $prev in
    -j|-l|-L|-z|--undo|--rollback)
        COMPREPLY=($(compgen -f -- "$cur"))
        return ;;
    -m|--threads)
        COMPREPLY=($(compgen -W "auto" -- "$cur"))
        return ;;
    -E)
        local head=
        [[ $cur == *,* ]] && head=${cur%,*},
        COMPREPLY=($(compgen -P "$head" -W "journal_only fixes_only bmap2extent unshare_blocks fragcheck discard nodiscard readahead_kb= optimize_extents no_optimize_extents inode_count_fullmap no_inode_count_fullmap ea_ver= check_encoding" -- "${cur##*,}"))
        compopt -o nospace 2>/dev/null
        return ;;
    -b|-B|--max-memory|-C)
        COMPREPLY=()
        return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "-n -y -p -a -r -f --force -v -j -b -B -c -k -l -L -D -E -F -d -m --threads --max-memory --idle --json -t -C --progress -z --undo --online --rollback -h --help -V --version" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _pfsck pfsck
