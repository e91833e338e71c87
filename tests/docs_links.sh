#!/bin/sh
# The documentation stands on its own: README.md, docs/*.md, the other
# READMEs and every --help text never send a reader outside the repository
# (shared/, ../shared), and every relative link in them (with its #anchor)
# leads to a file and heading that exist; docs/planners.md covers every
# planner option `taotsim planners` lists.
# Usage: docs_links.sh SOURCE_ROOT [TAOTSIM]
set -u
root=${1:?usage: docs_links.sh SOURCE_ROOT [TAOTSIM]}
bin=${2:-${TAOTSIM:-}}
cd "$root" || exit 2
fail=0

docs="README.md docs/*.md tests/spec/README.md tests/spec/vectors/README.md traces/README.md plots/README.md"

# 1. No pointer outside the repository.
if grep -n -e 'shared/' -e '\.\./shared' $docs; then
    echo "FAIL: the lines above point to shared/, which is not in the repository"
    fail=1
fi

# GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'.
anchors() {
    awk '/^```/ { code = !code; next } !code && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
        tr 'A-Z' 'a-z' | sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g'
}

# 2. Every relative link resolves (fenced code blocks are not markdown).
for doc in $docs; do
    dir=$(dirname "$doc")
    links=$(awk '/^```/ { code = !code; next } !code' "$doc" | grep -o '\]([^) ]*)' | sed -e 's/^](//' -e 's/)$//')
    for link in $links; do
        case $link in
            http://* | https://* | mailto:*) continue ;;
        esac
        path=${link%%#*}
        anchor=
        case $link in *'#'*) anchor=${link#*#} ;; esac
        if [ -z "$path" ]; then
            target=$doc
        else
            target=$dir/$path
        fi
        if [ ! -e "$target" ]; then
            echo "FAIL: $doc links to '$link': $target does not exist"
            fail=1
            continue
        fi
        if [ -n "$anchor" ] && ! anchors "$target" | grep -qx -- "$anchor"; then
            echo "FAIL: $doc links to '$link': $target has no heading with anchor #$anchor"
            fail=1
        fi
    done
done

# 3. No --help text points outside the repository.
if [ -n "$bin" ]; then
    commands=$("$bin" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z0-9]/ { print $1 }')
    if [ -z "$commands" ]; then
        echo "FAIL: no commands found in '$bin --help'"
        fail=1
    fi
    for c in "" $commands; do
        out=$("$bin" $c --help 2>&1)
        if printf '%s\n' "$out" | grep -n -e 'shared/' -e '\.\./shared'; then
            echo "FAIL: 'taotsim $c --help' points to shared/ (lines above)"
            fail=1
        fi
        # Every page a help text names is in the repository (docs/ by default).
        for page in $(printf '%s\n' "$out" | grep -o '[A-Za-z0-9_./-]*\.md'); do
            [ -e "$page" ] || [ -e "docs/$page" ] ||
                { echo "FAIL: 'taotsim $c --help' names $page, which is not in the repository"; fail=1; }
        done
    done
    # 4. docs/planners.md documents every planner option `taotsim planners` lists.
    options=$("$bin" planners | awk '/^  --/ { print $1 }' | sort -u)
    [ -n "$options" ] || { echo "FAIL: no planner options in 'taotsim planners'"; fail=1; }
    for o in $options; do
        grep -q -- "\`$o" docs/planners.md || { echo "FAIL: docs/planners.md does not document $o"; fail=1; }
    done
fi

[ "$fail" = 0 ] && echo "docs: no pointer outside the repository, every link resolves"
exit "$fail"
