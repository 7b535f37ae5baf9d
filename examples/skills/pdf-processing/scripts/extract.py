"""Print the names of a PDF form's fields (a sketch: it reads the /T entries, uncompressed only)."""
import re
import sys

with open(sys.argv[1], "rb") as f:
    for name in re.findall(rb"/T\s*\(([^)]*)\)", f.read()):
        print(name.decode("latin-1"))
