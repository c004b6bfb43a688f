"""Payload formats: one package per format behind one small interface (see ``base``)."""
