"""Container engines: the one Docker seam (backend), engine specs, the host lock, image
shipping between engines, lab build claims.
"""
