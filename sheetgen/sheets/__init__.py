"""Sheet declarations: each module declares one sheet's quantities and where they sit."""
