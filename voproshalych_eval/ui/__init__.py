"""Streamlit helpers shared by the pages (the only core-adjacent package that imports Streamlit)."""
