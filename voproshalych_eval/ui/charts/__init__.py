"""Plotly chart builders (pure functions returning go.Figure, no Streamlit)."""
