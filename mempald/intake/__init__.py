"""What drives ingest: watching folders and routing their events, the reconcile scan, source administration and
the ingest loops that feed the ingestor from the file queue."""
