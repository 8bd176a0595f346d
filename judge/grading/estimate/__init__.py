"""The bill before it is paid (`--estimate`): core.py counts and prices (imports litellm); flags.py
adds the flags and imports nothing heavy, so building the CLI parser stays fast."""
