"""``python -m waygraph``: the same as the ``waygraph`` command."""

from waygraph.cli import main

if __name__ == "__main__":
    main()
