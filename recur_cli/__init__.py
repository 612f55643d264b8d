"""`recur`: the command line for a Recur server. It talks to the HTTP API only (RECUR_URL, RECUR_TOKEN), so it
works from a laptop against any server, and never holds a second copy of the API's rules."""
