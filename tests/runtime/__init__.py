"""Tests of framejit/runtime/."""
