"""The filters of the request pipeline, one module per stage, in upstream's order."""
