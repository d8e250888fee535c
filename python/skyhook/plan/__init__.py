"""Query plans: Substrait plans built by the client, decomposed into per-object
sub-plans that storage runs and a super-plan the client runs on their results."""
