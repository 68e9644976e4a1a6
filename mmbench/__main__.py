"""The `mmbench` command (and `python -m mmbench`). Importing the command line takes a moment
(pandas, matplotlib, rich); Ctrl-C then ends it in one line with exit status 130, not a traceback
of the import, as Ctrl-C later does (cli's group)."""

import sys


def main() -> None:
    try:
        from .cli import main as commands
    except KeyboardInterrupt:
        print("Error: interrupted while starting; nothing was run", file=sys.stderr)
        sys.exit(130)
    commands()


if __name__ == "__main__":
    main()
