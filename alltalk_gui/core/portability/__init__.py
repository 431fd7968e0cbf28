"""What differs between the systems the app runs on, in one place: names every system takes (portable_names) and
how child processes are started on Windows (process_flags). Below every step package: anyone may import it."""
