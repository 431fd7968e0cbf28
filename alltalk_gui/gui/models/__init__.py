"""Thin QAbstractTableModel adapters over the core's pure models."""
