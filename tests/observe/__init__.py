"""Tests of framejit/observe/."""
