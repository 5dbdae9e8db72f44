"""The read-only web inspector: pages that show what a conversation's context holds, what
left it and why, served from the server's own process (`contextwm serve --inspector PORT`)."""
