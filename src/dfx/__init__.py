"""dfx, the dataflow explorer."""
