"""Software engines: XML events, predicates, the reference oracle, the fast lazy-DFA engine, lxml."""
