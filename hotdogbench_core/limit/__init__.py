"""limit"""
