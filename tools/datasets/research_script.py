"""research_assistant: a researcher and an assistant prepare a grant proposal over six
sessions spread across three weeks. Several facts change between sessions (the deadline,
the budget, the co-PI, the number of cities and sensors, the target journal); probes ask
for them both before and after the change, so the right answer depends on when the
question is asked.
"""

from __future__ import annotations

import json
import random

from harpe_lab.conversation import Conversation

WHAT = """
Six working sessions (3 to 24 March 2025) between Dr. Lena Ortiz, an urban climate
researcher, and a research assistant with literature and note tools, preparing a proposal
to the invented Hollis Foundation on cooling streets with tree canopy and reflective
pavement. Facts set in the first sessions are later revised — the deadline moves, the
budget is cut, a co-PI withdraws, a city is added, the sensor count and the target journal
change — so the probes are knowledge-update questions: the newest value before the
question is the right answer. Two questions are asked twice, before and after the change,
with different answers. Each turn's metadata has its `session` (1–6) and `date`.
"""

HOW = """
The sessions are a fixed script written for harpe_lab (`tools/datasets/research_script.py`); the
papers the tools return are invented (titles, authors and numbers included) and a seeded
generator varies small details. No usage is recorded.
"""

SYSTEM = (
    "You are a research assistant helping a scientist write a grant proposal. Keep track of decisions "
    "and deadlines, cite only papers returned by your tools, and save important decisions as notes."
)

PAPERS = [
    ("P-1041", "Street-level cooling from urban tree canopy: a multi-city sensor study",
     "Okonkwo, Ferreira & Lund (2022)",
     "We deployed 212 low-cost temperature sensors along 48 streets in three hot-arid cities and related "
     "afternoon air temperature to canopy cover measured from aerial lidar. Each 10 percentage points of canopy "
     "cover lowered mean afternoon air temperature by 0.6 C (95% CI 0.4-0.8) and surface temperature by 2.9 C. "
     "Cooling saturated above roughly 40% cover. Sensor drift was the main source of error; weekly co-location "
     "with a reference station reduced it below 0.2 C."),
    ("P-1187", "Reflective pavement coatings and pedestrian thermal comfort",
     "Baptiste & Whitcombe (2023)",
     "Cool pavement coatings raised albedo from 0.12 to 0.33 on 14 residential blocks. Surface temperatures fell by "
     "up to 9 C at noon, but mean radiant temperature at pedestrian height rose by 2-4 C on sunny afternoons because "
     "more sunlight was reflected onto people. Net thermal comfort (UTCI) did not improve without shade. We recommend "
     "combining reflective coatings with trees rather than using them alone."),
    ("P-1230", "Low-cost sensor networks for urban heat: calibration and siting",
     "Haugen, Mbeki & Sørensen (2021)",
     "Consumer-grade sensors in ventilated radiation shields reach 0.3 C accuracy after calibration. Siting matters "
     "more than hardware: sensors mounted at 3 m on poles within 2 m of walls read 0.8 C warmer than those in open "
     "street sections. We give a siting protocol and a drift-correction method using periodic co-location."),
    ("P-1302", "Heat, health and inequity in Sun Belt neighbourhoods",
     "Castellanos, Reid & Yoon (2024)",
     "Across 11 Sun Belt cities, census tracts in the lowest income quintile had 11% less canopy and were 1.5 C "
     "warmer on summer afternoons than the highest quintile. Heat-related emergency visits rose 7% per 1 C. We argue "
     "that cooling interventions should be targeted using both temperature and vulnerability indices."),
    ("P-1355", "Satellite land surface temperature versus street air temperature",
     "Sato, Eriksen & Adeyemi (2020)",
     "Landsat land surface temperature explains only 30-45% of the variance in street-level air temperature in "
     "dense neighbourhoods. Combining satellite data with sparse ground sensors in a mixed model improved "
     "prediction error from 1.9 C to 0.7 C. Ground networks remain necessary for pedestrian-scale exposure."),
    ("P-1419", "Costs of urban cooling interventions: a practitioner survey",
     "Lindqvist & Abara (2023)",
     "From 37 municipal projects, planting and establishing a street tree cost a median 1,900 USD over three years; "
     "cool pavement coatings cost 3-6 USD per square metre and last 5-7 years. Maintenance budgets were the most "
     "common reason projects under-delivered."),
    ("P-1468", "Evaluating heat interventions with before-after-control-impact designs",
     "Moreau, Tan & Haddad (2022)",
     "We show that before-after-control-impact (BACI) designs with at least two summers of baseline data detect "
     "cooling effects of 0.5 C with 80% power using 20 sensors per treatment arm. Single-summer designs were "
     "confounded by inter-annual weather variation."),
]


def _search(r: random.Random, query: str, ids: list[str]) -> str:
    chosen = [p for p in PAPERS if p[0] in ids]
    out = [f"search_papers: {len(chosen)} results for {query!r}"]
    for pid, title, authors, abstract in chosen:
        out.append(f"\n[{pid}] {title}\n{authors}. Cited by {r.randint(12, 240)}.\nAbstract: {abstract}")
    return "\n".join(out)


def _note(text: str, n: int) -> str:
    return json.dumps({"saved": True, "note": f"N-{n:03d}", "text": text})


def build(s, r: random.Random) -> Conversation:  # s: make_datasets.Script
    notes = [0]

    def note(text: str) -> tuple:
        notes[0] += 1
        return ("save_note", {"text": text}, _note(text, notes[0]))

    session = {"n": 0, "date": ""}

    def t(user: str, reply: str, **kw) -> int:
        return s.turn(user, reply, meta={"session": session["n"], "date": session["date"]}, **kw)

    starts: dict[int, int] = {}

    def begin(n: int, date: str) -> None:
        session.update(n=n, date=date)
        starts[n] = len(s.turns)

    # --- session 1: kickoff ----------------------------------------------------------------
    begin(1, "2025-03-03")
    t("Morning! I'm starting a proposal for the Hollis Foundation's Urban Futures program. Can you help me keep it organised over the next few weeks?",
      "Good morning! Happy to. Tell me the essentials (deadline, budget, team, and the question you want to answer) and I'll keep a running set of notes.")
    t("Deadline is April 2. Budget cap is $250,000 over two years.",
      "Noted: deadline April 2, budget cap $250,000 for two years.",
      tools=[("Saving that.", [note("Hollis Urban Futures: deadline 2025-04-02; budget cap $250,000 / 2 years")])],
      facts={"deadline_1": "user", "budget_1": "user"})
    t("The idea: measure how much street trees and reflective pavement cool streets at pedestrian height, in three desert cities: Tucson, Phoenix and Las Cruces.",
      "A clear, fundable question. Comparing the two interventions in three cities gives you replication across climates that are similar but not identical.",
      facts={"cities_1": "user"})
    t("My co-PI is Marcus Bell from civil engineering, he'd handle the pavement side.",
      "Great, that splits the work cleanly: you on canopy and microclimate, Marcus on pavement materials.",
      tools=[("", [note("Team: PI Lena Ortiz (urban climate); co-PI Marcus Bell (civil engineering, pavements)")])],
      facts={"copi_1": "user"})
    t("What does the literature say about the two interventions? Just a quick scan.",
      "Let me search.",
      tools=[("", [("search_papers", {"query": "street tree canopy reflective pavement pedestrian cooling"},
                    _search(r, "street tree canopy reflective pavement pedestrian cooling", ["P-1041", "P-1187", "P-1302"]))])])
    t("Summarise please",
      "Three takeaways: (1) canopy cools air by about 0.6 C per 10 points of cover, saturating near 40% (P-1041); "
      "(2) reflective coatings cool surfaces a lot but can make pedestrians hotter by reflecting sunlight onto them, "
      "unless combined with shade (P-1187); (3) the hottest streets are in low-income tracts, so targeting matters (P-1302). "
      "Your comparison of the two, alone and combined, fills a real gap.")
    t("Interesting, so the combination is the story.",
      "Yes: 'trees plus cool pavement versus either alone' is a stronger framing than 'which is better'.")
    t("The program officer is Dr. Ayo Mensah. She said the narrative is limited to 15 pages.",
      "Noted: program officer Dr. Ayo Mensah, narrative limit 15 pages.",
      tools=[("", [note("Program officer: Dr. Ayo Mensah. Narrative limit: 15 pages.")])],
      facts={"officer": "user", "pages": "user"})
    t("Make me a rough timeline to April 2.",
      "Working back from April 2: aims draft by March 10, methods and budget by March 19, letters of support requested by March 12, "
      "full draft March 26, internal review March 28-31, submit April 1 to leave a day of slack.")
    t("Good. That's it for today.",
      "Great start. Next time: literature for the methods and the sensor design.")
    # --- session 2 -------------------------------------------------------------------------
    begin(2, "2025-03-06")
    t("Hi again. Let's do the sensor network today.",
      "Welcome back. Last time we fixed the question (trees vs. cool pavement vs. both, three cities) and the timeline. For sensors, let me pull the methods papers.",
      tools=[("", [("search_papers", {"query": "low-cost temperature sensor network calibration siting"},
                    _search(r, "low-cost temperature sensor network calibration siting", ["P-1230", "P-1355", "P-1468"]))])])
    t("How many sensors do we need?",
      "The BACI design paper (P-1468) detects a 0.5 C effect with 80% power using 20 sensors per treatment arm. With three arms "
      "(trees, pavement, both) plus controls, that's 80 per design; with some spares and siting constraints, about 40 per city is comfortable.")
    t("Let's say 120 sensors total then, 40 per city.",
      "120 sensors, 40 per city. I'll put that in the methods notes.",
      tools=[("", [note("Sensor network: 120 sensors total, 40 per city; radiation shields; weekly co-location (P-1230)")])],
      facts={"sensors_1": "user"})
    t("We'll pilot first at Reid Park in Tucson in May.",
      "A pilot at Reid Park, Tucson, in May makes sense: you can test siting and drift correction before the full deployment.",
      facts={"pilot": "user"})
    t("For the pilot paper I'm thinking Urban Climate.",
      "Urban Climate fits well; it publishes sensor-network studies regularly.",
      tools=[("", [note("Pilot paper target journal: Urban Climate")])],
      facts={"journal_1": "user"})
    t("Bad news, by the way. Marcus just emailed, he's withdrawing, too much teaching this year.",
      "Sorry to hear that. Do you have someone in mind to replace him as co-PI?")
    t("Yes, Hana Sato from geography agreed this morning. She does remote sensing, so she'd bring the satellite side.",
      "That's a good fit: Sato's work linking satellite surface temperature to street air temperature (P-1355) is directly relevant. I'll update the team notes.",
      tools=[("", [note("Team change: Marcus Bell withdrew; co-PI is now Hana Sato (geography, remote sensing)")])],
      facts={"copi_2": "user"})
    t("Without Marcus, who covers pavements?",
      "Options: a pavement engineer as senior personnel rather than co-PI, or a subcontract with the city's street department, which installs the coatings anyway.")
    t("Let's ask the city. Write that down.",
      "Saved.",
      tools=[("", [note("Pavement expertise: approach city street department (subcontract or letter)")])])
    t("Enough for today, thanks.",
      "Good session. Next: methods details and the budget.")
    # --- session 3 -------------------------------------------------------------------------
    begin(3, "2025-03-11")
    t("Hi! Before we start, remind me: what's the proposal deadline?",
      "April 2, per our first session.")
    t("Actually that's changed, the foundation extended it. The deadline is now April 16.",
      "Good news, two more weeks. Updated: the deadline is April 16.",
      tools=[("", [note("Deadline moved: now 2025-04-16 (was 2025-04-02)")])],
      facts={"deadline_2": "user"})
    t("Shift the timeline accordingly.",
      "Shifted by two weeks: aims March 24, methods and budget April 2, letters requested March 26, full draft April 9, "
      "internal review April 10-14, submit April 15.")
    t("Also, Ayo suggested adding El Paso, so four cities now: Tucson, Phoenix, Las Cruces and El Paso.",
      "Four cities it is. El Paso adds a city on the Mexico border with a different building stock, which strengthens the design.",
      tools=[("", [note("Cities: Tucson, Phoenix, Las Cruces, El Paso (El Paso added on program officer's suggestion)")])],
      facts={"cities_2": "user"})
    t("Does that change the sensor count?",
      "At 40 per city, four cities would mean 160 sensors. Let's settle it with the budget next time.")
    t("Look up what interventions cost.",
      "Searching.",
      tools=[("", [("search_papers", {"query": "cost street trees cool pavement municipal projects"},
                    _search(r, "cost street trees cool pavement municipal projects", ["P-1419"]))])])
    t("So trees are about $1,900 each over three years?",
      "Yes, median $1,900 over three years including establishment; cool coatings $3-6 per square metre, lasting 5-7 years (P-1419). "
      "The cities will pay for the interventions themselves; your budget covers measurement.")
    t("Right, we only measure. Good point for the narrative.",
      "I'll note it: the proposal evaluates interventions the cities already fund, which keeps the budget lean.",
      tools=[("", [note("Framing: cities fund the interventions; proposal funds measurement and analysis")])])
    t("That's all for today.",
      "See you next time for the budget.")
    # --- session 4 -------------------------------------------------------------------------
    begin(4, "2025-03-17")
    t("Budget day. What's our cap again?",
      "$250,000 over two years, from our first session.")
    t("Not anymore. Ayo says the program was oversubscribed, so caps are cut to $180,000.",
      "That's a 28% cut. Updated: the budget cap is $180,000 over two years.",
      tools=[("", [note("Budget cap cut: now $180,000 / 2 years (was $250,000)")])],
      facts={"budget_2": "user"})
    t("Can we still afford 160 sensors?",
      "Let me run the numbers.",
      tools=[("", [("budget_calc", {"sensors": 160, "sensor_unit_cost": 310, "postdoc_months": 18, "student_months": 24,
                                     "travel": 14000, "indirect_rate": 0.1},
                    "\n".join([
                        "item                         amount",
                        "sensors 160 x $310           49,600",
                        "postdoc 18 months            81,000",
                        "graduate student 24 months   48,000",
                        "travel (4 cities)            14,000",
                        "subtotal                    192,600",
                        "indirect 10%                 19,260",
                        "total                       211,860   OVER CAP by 31,860",
                    ]))])])
    t("Ouch. What if we go down to 90 sensors?",
      "Recomputing with 90.",
      tools=[("", [("budget_calc", {"sensors": 90, "sensor_unit_cost": 310, "postdoc_months": 18, "student_months": 24,
                                     "travel": 14000, "indirect_rate": 0.1},
                    "\n".join([
                        "item                         amount",
                        "sensors 90 x $310            27,900",
                        "postdoc 18 months            81,000",
                        "graduate student 24 months   48,000",
                        "travel (4 cities)            14,000",
                        "subtotal                    170,900",
                        "indirect 10%                 17,090",
                        "total                       187,990   OVER CAP by 7,990",
                    ]))])])
    t("Still over. Cut travel to $6,000?",
      "With travel at $6,000 the total is $179,190, just under the cap.")
    t("OK: 90 sensors, travel $6,000. Write it down.",
      "Saved: 90 sensors across four cities, travel $6,000, total $179,190.",
      tools=[("", [note("Budget v2: 90 sensors (was 120 planned), travel $6,000, total $179,190 under $180,000 cap")])],
      facts={"sensors_2": "user"})
    t("With 90 sensors is the design still powered?",
      "At 20 per arm you need 60 for three arms in a single city design. Across four cities with 90 sensors, I'd pool arms across cities and use the cities as blocks; the power stays near 80% for a 0.5 C effect if the baseline covers two summers (P-1468).")
    t("The IRB protocol number came through too: IRB-2025-0417. We need it because of the pedestrian comfort survey.",
      "Noted, IRB-2025-0417, for the comfort survey.",
      tools=[("", [note("IRB protocol: IRB-2025-0417 (pedestrian comfort survey)")])],
      facts={"irb": "user"})
    t("Done for today.",
      "Good progress despite the cut.")
    # --- session 5 -------------------------------------------------------------------------
    begin(5, "2025-03-20")
    t("Let's write the aims today.",
      "Here's a draft: Aim 1, quantify pedestrian-level cooling from tree canopy, reflective pavement and both, across four desert cities; "
      "Aim 2, link ground measurements to satellite surface temperature to map exposure city-wide (Hana's part); "
      "Aim 3, estimate cooling per dollar to guide city investment.")
    t("Aim 3 is nice. Can we support it?",
      "Yes, with the practitioner cost survey (P-1419) and your cooling estimates you can report degrees per $1,000 for each intervention.")
    t("Also, change of plan for the pilot paper: we'll send it to Environmental Research Letters, it's faster.",
      "Updated: the pilot paper targets Environmental Research Letters instead of Urban Climate.",
      tools=[("", [note("Pilot paper target journal: Environmental Research Letters (was Urban Climate)")])],
      facts={"journal_2": "user"})
    t("Who should write the letter of support from Tucson?",
      "The parks department runs Reid Park, where the pilot is. Do you have a contact?")
    t("Rosa Delgado, she's the urban forestry manager.",
      "I'll draft a request to Rosa Delgado, urban forestry manager, Tucson Parks and Recreation.",
      tools=[("", [note("Letter of support: Rosa Delgado, urban forestry manager, Tucson Parks and Recreation")])],
      facts={"letter": "user"})
    for q, a in r.sample([
        ("Should Aim 2 mention Landsat by name?", "Yes, and say you'll add Sentinel-2 for higher resolution where available."),
        ("How do I phrase the equity angle?", "Lead with the finding that the lowest-income tracts are 1.5 C hotter (P-1302) and say sites are chosen to include them."),
        ("Is 15 pages enough for three aims?", "Yes, if methods are shared across aims: about 4 pages of background, 8 of methods, 3 of outcomes."),
        ("Can the grad student lead Aim 3?", "That works well; cost analysis is a good thesis chapter."),
    ], 3):
        t(q, a)
    t("Good. Stop here.",
      "The aims are in good shape. Next session: final check before writing the full draft.")
    # --- session 6 -------------------------------------------------------------------------
    begin(6, "2025-03-24")
    t("Final check today. Let's go through everything we decided.",
      "Sure. Let me start from the notes.",
      tools=[("", [("list_notes", {}, "\n".join(f"N-{k:03d}" for k in range(1, notes[0] + 1)))])])
    t("Actually, let me quiz you instead. I want to see what you remember.",
      "Go ahead!")
    end_session6 = len(s.turns)

    probes = [
        # asked before the deadline changed (start of session 3): the old value is right
        s.probe("deadline_before", "What is the proposal deadline?", "April 2", ["deadline_1"], "single-session-user",
                asked_at=starts[3]),
        s.probe("budget_before", "What is the budget cap?", "$250,000 over two years", ["budget_1"], "single-session-user",
                asked_at=starts[4]),
        s.probe("deadline", "What is the proposal deadline?", "April 16", ["deadline_2"], "knowledge-update"),
        s.probe("budget", "What is the budget cap?", "$180,000 over two years", ["budget_2"], "knowledge-update"),
        s.probe("copi", "Who is the co-PI?", "Hana Sato", ["copi_2"], "knowledge-update"),
        s.probe("cities", "Which cities are in the study?", "Tucson, Phoenix, Las Cruces and El Paso", ["cities_2"],
                "knowledge-update"),
        s.probe("sensors", "How many sensors will be deployed?", "90", ["sensors_2"], "knowledge-update"),
        s.probe("journal", "Which journal will the pilot paper go to?", "Environmental Research Letters", ["journal_2"],
                "knowledge-update"),
        s.probe("officer", "Who is the program officer?", "Dr. Ayo Mensah", ["officer"], "single-session-user"),
        s.probe("pages", "What is the page limit of the narrative?", "15 pages", ["pages"], "single-session-user"),
        s.probe("pilot", "Where and when is the pilot?", "Reid Park in Tucson, in May", ["pilot"], "single-session-user"),
        s.probe("irb", "What is the IRB protocol number?", "IRB-2025-0417", ["irb"], "single-session-user"),
        s.probe("letter", "Who writes the letter of support from Tucson?", "Rosa Delgado", ["letter"], "single-session-user"),
        s.probe("deadline_when", "On which date did the researcher say the deadline had moved?", "March 11, 2025",
                ["deadline_2"], "temporal"),
        s.probe("design", "How many cities and sensors does the final design have?", "four cities, 90 sensors",
                ["cities_2", "sensors_2"], "multi-session"),
    ]
    assert end_session6 == len(s.turns)
    probes.sort(key=lambda p: (p.asked_at, p.id))
    return Conversation(
        turns=tuple(s.turns), id="research_assistant", source="dataset:research_assistant",
        metadata={"dataset": "research_assistant", "sessions": {str(k): v for k, v in starts.items()},
                  "researcher": "Dr. Lena Ortiz", "funder": "Hollis Foundation (invented)"},
        probes=tuple(probes), system=SYSTEM,
    )
