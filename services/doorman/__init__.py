"""The doorman: reads a question once and decides whether it may stand on the public wall (CLEAR) or waits
for a person (HOLD). It stands off the answer road and fails one way: any error inside means HOLD."""
