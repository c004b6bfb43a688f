"""Engines that run the pipeline: one package per engine."""
