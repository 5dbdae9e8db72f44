"""Category budgets with borrowing, context contributors, and the context assembled by category."""
