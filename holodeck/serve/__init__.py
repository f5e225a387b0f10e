"""``holodeck serve``: the agent's knowledge bases as an MCP server that stays in step with
the files.

``tools`` turns vectorstore tools into MCP tools (listing and calling them); ``run`` serves
them over stdio or streamable HTTP while the watch loop (``holodeck.tools.watch``) keeps the
indexes in step in a thread of its own, and stops cleanly on Ctrl-C or SIGTERM; ``auth``
decides who may ask over HTTP (a bearer token, and the rule for an address other machines
can reach).
"""
