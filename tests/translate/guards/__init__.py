"""Tests of framejit/translate/guards/."""
