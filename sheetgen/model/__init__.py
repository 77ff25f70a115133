"""The model: the quantity vocabulary, the formula factories, the refined time and the Python
reference."""
