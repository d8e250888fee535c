"""Physical design management: rewriting a dataset's objects to another design
(format, column groups, sort order, compression), inside storage or at the
client, and publishing what was done in the manifest."""
