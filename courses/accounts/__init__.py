"""Accounts: sign up, sign in, sign out (Django auth), and each person's saved preferences."""
