"""Import paths of the original HoloDeck that code written for it uses (graders)."""
