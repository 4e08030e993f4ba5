"""Results of crowd-keras in the layouts of other libraries (importing this package imports
none of them): :mod:`crowd_keras.compat.cleanlab` gives a fitted label model's answer as
cleanlab's ``get_label_quality_multiannotator`` dictionary. See ``docs/features.md``."""
