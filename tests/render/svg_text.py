#!/usr/bin/env python3
"""The text an SVG figure shows, one string per <text> element (tspans
joined), in document order; then, on a line of its own, the number of drawn
<path> elements as "#paths N", and the number of colour boxes (the key
of a heat map: gnuplot draws one as a group of at least 16 filled polygons in
at least 8 colours) as "#colorboxes N". Reads the file with the standard library's
XML parser, so a figure that is not well-formed XML fails here (exit 1).

usage: svg_text.py FIGURE.svg"""
import sys
import xml.etree.ElementTree as ET


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        root = ET.parse(sys.argv[1]).getroot()
    except ET.ParseError as e:
        sys.exit("%s: not well-formed XML: %s" % (sys.argv[1], e))
    if not root.tag.endswith("svg"):
        sys.exit("%s: the root element is <%s>, not <svg>" % (sys.argv[1], root.tag))
    paths = colorboxes = 0
    for el in root.iter():
        tag = el.tag.rsplit("}", 1)[-1]
        if tag == "text":
            text = "".join(el.itertext()).strip()
            if text:
                print(text)
        elif tag == "path":
            paths += 1
        elif tag == "g":
            fills = [c.get("fill") for c in el if c.tag.rsplit("}", 1)[-1] == "polygon"]
            colorboxes += len(fills) >= 16 and len(set(fills)) >= 8
    print("#paths %d" % paths)
    print("#colorboxes %d" % colorboxes)


if __name__ == "__main__":
    main()
