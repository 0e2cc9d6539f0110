"""Plotly figure builders: pure functions (data in, go.Figure out), used by pages and reports; no Streamlit."""
