"""Text analysis below the stores and retrieval: words, stems, identifiers, stop words
(``analysis``)."""
