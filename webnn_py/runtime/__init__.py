"""Graph IR, compilation to an execution plan, and the context timeline."""
