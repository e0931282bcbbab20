"""`python -m synartesis` runs the CLI."""

from synartesis.cli import main

if __name__ == "__main__":
    main()
