"""`p2pshim` (and `python -m p2pshim`): replaces this Python process with
the bundled C launcher, so that the launcher is the program's parent, keeps
the pid the caller sees (signals reach it), and finds the library from its
own path inside the package."""
import os
import sys

from . import launcher_path


def main():
    exe = launcher_path()
    try:
        os.execv(exe, [exe] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(f"p2pshim: cannot run the bundled launcher {exe}: {e.strerror}\n")
        return 127
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
