"""Helpers shared by the apps; this package imports no app."""
