"""Counterfactual VQA taxonomy (paper Fig. 2 and Tables 6-10): 5 categories, 17 subcategories."""

from __future__ import annotations

CATEGORIES: dict[str, tuple[str, ...]] = {
    "Demography": ("Gender", "Age", "Race/Ethnicity", "Body Characteristics", "Occupation"),
    "Culture": ("Historical Temporal Contexts", "Daily Cultural Practices", "Cultural Traditions"),
    "Environment": ("Natural Environment", "Built Environment", "Ambient Environment"),
    "Behavior": ("Individual Social Behaviors", "Interpersonal Behaviors", "Collective Social Contexts"),
    "Aesthetic": ("Personal Appearance/Style", "Object Design/Aesthetics", "Object Physical Properties"),
}
SUBCATEGORY_TO_CATEGORY: dict[str, str] = {sub: cat for cat, subs in CATEGORIES.items() for sub in subs}
OPTION_LETTERS = "ABCD"


def category_key(category: str) -> str:
    """Result-key suffix of a category (``consistency_demography``)."""
    return category.lower()
