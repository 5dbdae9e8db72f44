"""The transport of category budgets: their settings, options and allocation reports."""
