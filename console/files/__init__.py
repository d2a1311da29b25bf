"""Files the user names: a small input file read safely, an --out file written without
destroying anything."""
