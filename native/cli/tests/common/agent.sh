# An agent's process, as the CLI tests stand one in (common::as_agent): runs its arguments as its
# child and stays while they run (not `exec`), so that it is their parent.
"$@"
