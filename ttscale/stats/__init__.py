"""Statistics shared by the package: the problem bootstrap (`bootstrap`), paired comparisons of strategies with
cluster-bootstrap intervals (`paired`) and paired proportions with Tango's interval (`proportions`)."""
