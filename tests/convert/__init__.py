"""Tests of framejit/convert/."""
