"""The media plane: plan frame indices, decode each video once, take per-budget views."""
