"""The Parallelism sheet (Part 3) by concern: inputs and link costs, pipeline, tensor parallel,
sweep, chart, sentences."""
