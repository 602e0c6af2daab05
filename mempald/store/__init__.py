"""Drawer stores: Qdrant Edge embedded in the daemon (default) or a Qdrant server through qdrant-client."""
