"""Configuration: agent.yaml and the layered ``vectorstore:`` config, validated and resolved."""
