#!/usr/bin/env python3
"""Writes taotsim(1) with help2man: the page help2man makes from
`taotsim --help` and `--version`, plus one subsection per command holding
that command's --help, so the man page says what the binary says.

usage: gen_man.py TAOTSIM HELP2MAN OUTPUT
"""
import os
import re
import subprocess
import sys
import tempfile


def roff_text(text):
    """Help text as roff lines that groff prints as they are."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e")
        # a line starting with . or ' would be a request
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def ascii_roff(text):
    """Every non-ASCII character as a groff escape (\\[u03BB]): the page then
    renders the same whatever input encoding groff assumes."""
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)


def commands(taotsim):
    """The command names, in the order `taotsim --help` lists them."""
    text = subprocess.run([taotsim, "--help"], check=True, capture_output=True, text=True).stdout
    names, inside = [], False
    for line in text.split("\n"):
        if line.startswith("Commands:"):
            inside = True
        elif inside and not line.strip():
            break
        elif inside:
            m = re.match(r"\s+([a-z0-9]+)\s", line)
            if m:
                names.append(m.group(1))
    if not names:
        sys.exit("gen_man.py: no commands found in 'taotsim --help'")
    return names


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    taotsim, help2man, output = sys.argv[1:]
    env = dict(os.environ, TAOTSIM_NO_PROGRESS="1", LC_ALL="C.UTF-8")
    parts = ["[COMMANDS IN DETAIL]",
             "Each command's \\fB\\-\\-help\\fR, as this build prints it."]
    for name in commands(taotsim):
        run = subprocess.run([taotsim, name, "--help"], capture_output=True, text=True, env=env)
        if run.returncode != 0 or not run.stdout.strip():
            sys.exit("gen_man.py: 'taotsim %s --help' failed (exit %d): %s"
                     % (name, run.returncode, run.stderr.strip()))
        parts += [".SS taotsim %s" % name, ".nf", roff_text(run.stdout), ".fi"]
    parts += ["[SEE ALSO]",
              "The documentation in the source tree: README.md and docs/README.md."]
    with tempfile.TemporaryDirectory() as tmp:
        include = os.path.join(tmp, "taotsim.h2m")
        page = os.path.join(tmp, "taotsim.1")
        with open(include, "w", encoding="utf-8") as f:
            f.write(ascii_roff("\n".join(parts)) + "\n")
        subprocess.run([help2man, "--no-info", "--section=1", "--source=taotsim",
                        "--name=replay MoE routing traces through expert-replica planners",
                        "--include=" + include, "--output=" + page, taotsim], check=True, env=env)
        with open(page, encoding="utf-8") as f:
            text = ascii_roff(f.read())
    tmp_out = output + ".tmp"
    with open(tmp_out, "w", encoding="ascii") as f:
        f.write(text)
    os.replace(tmp_out, output)


if __name__ == "__main__":
    main()
