"""The referee: runs the arms in parallel and fuses their ballots by reciprocal rank."""
